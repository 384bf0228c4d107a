"""Model cards: one renderer (render.py) for every model folder; `python -m training.cards` re-renders the shipped ones."""
