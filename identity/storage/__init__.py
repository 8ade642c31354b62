"""The project's shared persistence plumbing, the bottom layer every package may build on.

`sqlite` opens SQLite files durably and privately, `migrations` versions their schemas, and
`postgres` holds the one PostgreSQL connection pool and migration runner. They live inside
`identity` only because it is the bottom layer (bridge and adapters may import it, it imports
neither); nothing here knows who is asking or decides what anyone may do.
"""
