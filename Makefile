# Conveniences for a developer with the venv active; CI runs .ci/run.
.PHONY: test pytest lit lint format docs bench

test: pytest lit

pytest:
	pytest -n auto

lit:
	lit -sv tests/filecheck

lint:
	ruff check tdsl tests benchmarks
	ruff format --check tdsl tests benchmarks
	pyright

format:
	ruff check --fix tdsl tests benchmarks
	ruff format tdsl tests benchmarks

docs:
	python -m tdsl.tools.gen_reference
	python tests/unit/docs/test_walkthrough.py --update

bench:
	python benchmarks/run.py
