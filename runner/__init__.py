"""Declarative maintenance runner for Apache Hudi tables."""

__version__ = "0.1.0"
