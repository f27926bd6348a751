"""The Messages and Models API emulator: the wire format, the API's refusals, the model catalogue, the scripted demo
model and the test stub's server. It stands in for a service outside the platform and imports nothing of runs."""
