from tritongym.cli import main

main()
