"""Tests of the graph domain."""
