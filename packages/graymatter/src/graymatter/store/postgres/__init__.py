"""The PostgreSQL team backend (psycopg 3 + pgvector)."""
