"""Small helpers shared by the apps, one home each. A leaf: nothing here imports the project's apps."""
