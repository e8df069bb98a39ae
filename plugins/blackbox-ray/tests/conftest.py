"""A private noise-table cache, so the tests never write to the user's cache."""

import atexit
import os
import shutil
import tempfile

if "BLACKBOX_CACHE_DIR" not in os.environ:  # removed when the session ends (tables are 16 MB and up)
    os.environ["BLACKBOX_CACHE_DIR"] = tempfile.mkdtemp(prefix="blackbox-ray-test-cache-")
    atexit.register(shutil.rmtree, os.environ["BLACKBOX_CACHE_DIR"], ignore_errors=True)
