"""ResearchCodeBench core: the benchmark's task format, annotations, problems, scoring and test runner.

Plain Python: this package never imports Django or Celery, so workers, the CLI and contributors' laptops
all run the same code.
"""

__version__ = "0.1.0"
