"""Tests of the NLP domain."""
