"""A private noise-table cache, so the tests never write to the user's cache."""

import os
import tempfile

os.environ.setdefault("BLACKBOX_CACHE_DIR", tempfile.mkdtemp(prefix="blackbox-ray-test-cache-"))
