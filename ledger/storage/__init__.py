"""Storage: the one Store over a SQLAlchemy URL (`store`), its reads (`cursor`) and appends (`writer`), the
paper index as stored (`index_nodes`, `index_reads`, `index_keeping`), its tables and guards, and one small
module per backend (`backends/`). The only package that speaks SQL.
"""
