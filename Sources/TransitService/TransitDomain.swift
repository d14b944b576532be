import Transit
