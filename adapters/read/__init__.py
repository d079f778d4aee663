"""Reading: a dataset's raw rows, from the Hub or local data files (capped where decoders may blow up), and the values
held inside them (media, encoded fields), before any mapping."""
