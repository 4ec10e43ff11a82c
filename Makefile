.PHONY: run test lint bench install
install:
	pip install -r requirements.txt -r requirements-dev.txt
run:
	streamlit run app.py
test:
	pytest
lint:
	ruff check . && mypy && vulture
bench:
	python -m services bench dashboard --json
