from kverr.cli import main

main()
