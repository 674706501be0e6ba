from bakeoff.cli import main

main()
