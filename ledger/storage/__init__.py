"""Storage: the one Store and Writer over a SQLAlchemy URL, its tables and guards, and one small module per
backend (`backends/`). The only package that speaks SQL.
"""
