"""Data-Dependent Randomized Smoothing."""
