"""Tests of the audio domain."""
