"""Hot numerical code: pure functions on arrays.

Nothing here reads true data, draws noise or knows about budgets; every function is
post-processing of released values (or is called by the kernel on its own behalf)
and has a brute-force twin in the tests.
"""
