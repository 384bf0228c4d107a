"""What a recipe is worth: validation sets, leave-one-corpus-out, slices, learning curves."""
