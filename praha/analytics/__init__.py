"""Operations analytics on the pipeline's engine (PySpark): `praha analyze state-change-log`."""
