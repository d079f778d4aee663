"""`draftset build`: conversations rendered with the serving chat template into input_ids + loss_mask rows."""
