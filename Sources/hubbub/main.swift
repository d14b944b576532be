print("hubbub")
