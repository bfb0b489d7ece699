"""Tests of the memory-networks domain."""
