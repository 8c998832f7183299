// Test fixture: only its existence matters.
