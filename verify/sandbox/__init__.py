"""kverr.verify.sandbox: what runs in the confined child, and nothing else. The child imports
this package and the stdlib alone (tests/test_layout.py); it parses the revision's Python with
the stdlib's `ast` itself, as it compiles and runs that code. The parent imports from here too.
"""
