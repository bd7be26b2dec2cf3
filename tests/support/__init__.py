"""Test doubles for the tests; never imported by the product."""
