"""How a network is trained (longform.py, speaker.py, config.py) and one recipe file per shipped model (<task>/<version>.json)."""
