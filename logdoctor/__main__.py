from logdoctor.entry import main

main(prog_name="logdoctor")  # `python -m logdoctor` names itself as the installed command does
