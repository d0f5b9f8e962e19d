"""Test-suite settings shared by every unit test."""

import os

import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples, so that a run is
# reproducible and a red CI means a change broke something; a developer's run
# explores new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fallback: the test exercises a fallback after a native failure, so "
        "$TDSL_NO_FALLBACK is unset for it",
    )


@pytest.fixture(autouse=True)
def no_fallback(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with ``$TDSL_NO_FALLBACK=1``: a native failure that ``auto`` (or a
    strided variant) would quietly answer with the numpy target or a copy raises
    instead, so a lowering bug cannot hide as slowness.  A test marked ``fallback``
    exercises the fallback itself, and runs without it."""
    from tdsl.jit.options import NO_FALLBACK_VARIABLE

    if request.node.get_closest_marker("fallback") is None:
        monkeypatch.setenv(NO_FALLBACK_VARIABLE, "1")
    else:
        monkeypatch.delenv(NO_FALLBACK_VARIABLE, raising=False)


@pytest.fixture
def variants_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strided inputs of any size get their variant compiled (the runtime copies those
    under :data:`tdsl.runtime.native.MIN_VARIANT_BYTES` instead), so that the tests of
    variants can run them on small arrays."""
    import tdsl.runtime.native

    monkeypatch.setattr(tdsl.runtime.native, "MIN_VARIANT_BYTES", 0)
