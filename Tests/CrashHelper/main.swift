import StrataStorage
print("helper")
