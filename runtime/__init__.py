"""What only a worker runs: claiming and executing a run, the turn loop, and the browser (runtime.browser). No web
module imports it (the banned-api rules in the web's packages; tests/foundation/test_web_import_boundary.py)."""
