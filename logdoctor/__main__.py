from logdoctor.cli.entry import main

main()
