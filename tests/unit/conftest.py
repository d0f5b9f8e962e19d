"""Test-suite settings shared by every unit test."""

import os

from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples, so that a run is
# reproducible and a red CI means a change broke something; a developer's run
# explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
