from logdoctor.cli import main

main()
