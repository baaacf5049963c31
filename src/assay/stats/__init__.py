"""Method-free mathematics (pure numpy / scipy, no I/O). Never imports a method module."""
