"""Test helpers shared by several test modules (synthetic capture folders)."""
