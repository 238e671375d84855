from gtd.cli.entry import main

main()
