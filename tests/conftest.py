import numpy as np
import pytest


@pytest.fixture
def small_counts():
    return np.array([3, 0, 5, 1, 0, 0, 7, 2], dtype=np.int64)
