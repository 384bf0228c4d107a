from training.features.logmel import main

main()
