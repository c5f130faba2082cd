"""The PostgreSQL team backend (psycopg 3 + pgvector); imported only when a postgresql:// URL is opened."""

from graymatter.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
