from logdoctor.entry import main

main()
