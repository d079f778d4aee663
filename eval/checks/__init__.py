"""Checks that catch draft wiring and serving-configuration bugs before anyone spends a GPU-day."""
