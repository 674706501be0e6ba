"""What a room declares (the model), finding and checking rooms, questions resolved on a
grid, `bakeoff new`."""
