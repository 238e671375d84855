from gtd.cli.app import main

main()
