from training.cards.render import main

main()
