"""kverr.profiles: one declarative TOML file per project (see kverr/profile.py)."""
