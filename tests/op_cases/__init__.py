"""Op test cases by family: each module calls op_case.case() at import (see tests/op_tests.py)."""
