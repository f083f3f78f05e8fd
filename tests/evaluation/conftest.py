"""Fixtures of the evaluation tests: the fake OpenAI-compatible server (tests/evaluation/fake_llm.py)."""

from tests.evaluation.fake_llm import fake_llm

__all__ = ["fake_llm"]
