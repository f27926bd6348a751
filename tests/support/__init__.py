"""What tests share, one module per concern (see tests/README.md): import helpers from here, never from a test file
or from conftest.py."""
