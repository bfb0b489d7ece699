"""Tests of the vision domain."""
