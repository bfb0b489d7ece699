"""Tests of the domain packages, one folder per domain."""
