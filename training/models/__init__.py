"""The network and its architecture configs."""
