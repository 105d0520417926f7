from tritongym.evaluate.judge.judge import main

main()
