from gtd.cli.entry import run

run()
